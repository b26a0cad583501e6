"""Which botocore field each pulumi-aws input becomes: per type token, Pulumi property path -> API field.

The API paths start at the request shape the provider sends (terraform-provider-aws, which pulumi-aws
wraps): e.g. a launch template's inputs become `CreateLaunchTemplateRequest.LaunchTemplateData`,
shape `RequestLaunchTemplateData`. Where the provider's name or shape differs from the API's, the
entry's `note` says so.
"""

from __future__ import annotations

from tests.apimodels.check import Api, Free, Target

TAGS = Api("ec2", "Tag.Value", key="Tag.Key")
PULUMI_ONLY = Free("a provider setting: never sent to the API")
FREE_TEXT = "our own text in a string field the model does not constrain"

_LT = "RequestLaunchTemplateData"
_NIC = f"{_LT}.NetworkInterfaces[]"
_EBS = f"{_LT}.BlockDeviceMappings[].Ebs"
_LUSTRE = "CreateFileSystemRequest.LustreConfiguration"
_RUN = "RunInstancesRequest"
_DLM = "CreateLifecyclePolicyRequest.PolicyDetails"
_RDS = "CreateDBInstanceMessage"
_RDS_TAGS = Api("rds", "Tag.Value", key="Tag.Key")
_BUDGET_AND = "Budget.FilterExpression.And[]"

AWS: dict[str, dict[str, Target]] = {
    "pulumi:providers:aws": {
        "region": Free("the provider's region: an endpoint, not a request field"),
        "skipCredentialsValidation": PULUMI_ONLY,
        "skipRegionValidation": PULUMI_ONLY,
    },
    "aws:ec2/launchTemplate:LaunchTemplate": {
        "blockDeviceMappings[].deviceName": Api("ec2", f"{_LT}.BlockDeviceMappings[].DeviceName"),
        "blockDeviceMappings[].ebs.deleteOnTermination": Api("ec2", f"{_EBS}.DeleteOnTermination"),
        "blockDeviceMappings[].ebs.encrypted": Api("ec2", f"{_EBS}.Encrypted"),
        "blockDeviceMappings[].ebs.kmsKeyId": Api("ec2", f"{_EBS}.KmsKeyId"),
        "blockDeviceMappings[].ebs.volumeSize": Api("ec2", f"{_EBS}.VolumeSize"),
        "blockDeviceMappings[].ebs.volumeType": Api("ec2", f"{_EBS}.VolumeType"),
        "blockDeviceMappings[].ebs.iops": Api("ec2", f"{_EBS}.Iops"),
        "blockDeviceMappings[].ebs.throughput": Api("ec2", f"{_EBS}.Throughput"),
        "capacityReservationSpecification.capacityReservationPreference": Api(
            "ec2", f"{_LT}.CapacityReservationSpecification.CapacityReservationPreference"
        ),
        "capacityReservationSpecification.capacityReservationTarget.capacityReservationId": Api(
            "ec2", f"{_LT}.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"
        ),
        "ebsOptimized": Api("ec2", f"{_LT}.EbsOptimized"),
        "iamInstanceProfile.arn": Api("ec2", f"{_LT}.IamInstanceProfile.Arn", ref=True),
        "imageId": Api(
            "ec2",
            f"{_LT}.ImageId",
            note="`resolve:ssm:<parameter>` is the documented form of an image id taken from SSM",
        ),
        "instanceMarketOptions.marketType": Api("ec2", f"{_LT}.InstanceMarketOptions.MarketType"),
        "instanceMarketOptions.spotOptions.instanceInterruptionBehavior": Api(
            "ec2", f"{_LT}.InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior"
        ),
        "instanceMarketOptions.spotOptions.spotInstanceType": Api(
            "ec2", f"{_LT}.InstanceMarketOptions.SpotOptions.SpotInstanceType"
        ),
        "instanceMarketOptions.spotOptions.maxPrice": Api(
            "ec2", f"{_LT}.InstanceMarketOptions.SpotOptions.MaxPrice"
        ),
        "instanceType": Api("ec2", f"{_LT}.InstanceType"),
        "metadataOptions.httpEndpoint": Api("ec2", f"{_LT}.MetadataOptions.HttpEndpoint"),
        "metadataOptions.httpPutResponseHopLimit": Api(
            "ec2", f"{_LT}.MetadataOptions.HttpPutResponseHopLimit"
        ),
        "metadataOptions.httpTokens": Api("ec2", f"{_LT}.MetadataOptions.HttpTokens"),
        "metadataOptions.instanceMetadataTags": Api("ec2", f"{_LT}.MetadataOptions.InstanceMetadataTags"),
        "networkInterfaces[].associatePublicIpAddress": Api("ec2", f"{_NIC}.AssociatePublicIpAddress"),
        "networkInterfaces[].deleteOnTermination": Api("ec2", f"{_NIC}.DeleteOnTermination"),
        "networkInterfaces[].deviceIndex": Api("ec2", f"{_NIC}.DeviceIndex"),
        "networkInterfaces[].interfaceType": Api("ec2", f"{_NIC}.InterfaceType"),
        "networkInterfaces[].networkCardIndex": Api("ec2", f"{_NIC}.NetworkCardIndex"),
        "networkInterfaces[].securityGroups[]": Api(
            "ec2", f"{_NIC}.Groups[]", ref=True, note="the provider's security_groups is the API's Groups"
        ),
        "networkInterfaces[].subnetId": Api("ec2", f"{_NIC}.SubnetId", ref=True),
        "placement.groupName": Api("ec2", f"{_LT}.Placement.GroupName", ref=True),
        "tagSpecifications[].resourceType": Api("ec2", f"{_LT}.TagSpecifications[].ResourceType"),
        "tagSpecifications[].tags.*": Api(
            "ec2",
            f"{_LT}.TagSpecifications[].Tags[].Value",
            key=f"{_LT}.TagSpecifications[].Tags[].Key",
            note="the provider's tags map is the API's list of Key/Value tags",
        ),
        "tags.*": TAGS,
        "updateDefaultVersion": Free("the provider then calls ModifyLaunchTemplate with the new version"),
        "userData": Api("ec2", f"{_LT}.UserData"),
    },
    "aws:ec2/instance:Instance": {
        "privateIp": Api("ec2", f"{_RUN}.PrivateIpAddress"),
        "ami": Api("ec2", f"{_RUN}.ImageId", note="the provider's ami is the API's ImageId"),
        "associatePublicIpAddress": Api(
            "ec2",
            f"{_RUN}.NetworkInterfaces[].AssociatePublicIpAddress",
            note="the provider sends it on the primary interface it builds from subnetId",
        ),
        "ebsOptimized": Api("ec2", f"{_RUN}.EbsOptimized"),
        "iamInstanceProfile": Api("ec2", f"{_RUN}.IamInstanceProfile.Name", ref=True),
        "instanceType": Api("ec2", f"{_RUN}.InstanceType"),
        "metadataOptions.httpEndpoint": Api("ec2", f"{_RUN}.MetadataOptions.HttpEndpoint"),
        "metadataOptions.httpPutResponseHopLimit": Api(
            "ec2", f"{_RUN}.MetadataOptions.HttpPutResponseHopLimit"
        ),
        "metadataOptions.httpTokens": Api("ec2", f"{_RUN}.MetadataOptions.HttpTokens"),
        "rootBlockDevice.deleteOnTermination": Api(
            "ec2", f"{_RUN}.BlockDeviceMappings[].Ebs.DeleteOnTermination"
        ),
        "rootBlockDevice.encrypted": Api("ec2", f"{_RUN}.BlockDeviceMappings[].Ebs.Encrypted"),
        "rootBlockDevice.kmsKeyId": Api("ec2", f"{_RUN}.BlockDeviceMappings[].Ebs.KmsKeyId"),
        "rootBlockDevice.volumeSize": Api("ec2", f"{_RUN}.BlockDeviceMappings[].Ebs.VolumeSize"),
        "rootBlockDevice.volumeType": Api("ec2", f"{_RUN}.BlockDeviceMappings[].Ebs.VolumeType"),
        "rootBlockDevice.tags.*": Api(
            "ec2",
            f"{_RUN}.TagSpecifications[].Tags[].Value",
            key=f"{_RUN}.TagSpecifications[].Tags[].Key",
            note="the provider tags the root volume through a volume TagSpecification",
        ),
        "subnetId": Api("ec2", f"{_RUN}.SubnetId", ref=True),
        "tags.*": Api(
            "ec2",
            f"{_RUN}.TagSpecifications[].Tags[].Value",
            key=f"{_RUN}.TagSpecifications[].Tags[].Key",
            note="the provider tags the instance through an instance TagSpecification",
        ),
        "userDataBase64": Api("ec2", f"{_RUN}.UserData", note="already base64, as the API takes it"),
        "userDataReplaceOnChange": PULUMI_ONLY,
        "vpcSecurityGroupIds[]": Api("ec2", f"{_RUN}.SecurityGroupIds[]", ref=True),
    },
    "aws:ec2/placementGroup:PlacementGroup": {
        "strategy": Api("ec2", "CreatePlacementGroupRequest.Strategy"),
        "tags.*": TAGS,
    },
    "aws:autoscaling/group:Group": {
        "capacityRebalance": Api("autoscaling", "CreateAutoScalingGroupType.CapacityRebalance"),
        "desiredCapacity": Api("autoscaling", "CreateAutoScalingGroupType.DesiredCapacity"),
        "healthCheckType": Api("autoscaling", "CreateAutoScalingGroupType.HealthCheckType"),
        "launchTemplate.id": Api(
            "autoscaling", "CreateAutoScalingGroupType.LaunchTemplate.LaunchTemplateId", ref=True
        ),
        "launchTemplate.version": Api("autoscaling", "CreateAutoScalingGroupType.LaunchTemplate.Version"),
        "maxSize": Api("autoscaling", "CreateAutoScalingGroupType.MaxSize"),
        "minSize": Api("autoscaling", "CreateAutoScalingGroupType.MinSize"),
        "placementGroup": Api("autoscaling", "CreateAutoScalingGroupType.PlacementGroup", ref=True),
        "tags[].key": Api("autoscaling", "CreateAutoScalingGroupType.Tags[].Key"),
        "tags[].propagateAtLaunch": Api("autoscaling", "CreateAutoScalingGroupType.Tags[].PropagateAtLaunch"),
        "tags[].value": Api("autoscaling", "CreateAutoScalingGroupType.Tags[].Value"),
        "vpcZoneIdentifiers[]": Api(
            "autoscaling",
            "CreateAutoScalingGroupType.VPCZoneIdentifier",
            ref=True,
            note="the provider joins its list into the API's comma-separated VPCZoneIdentifier",
        ),
        "waitForCapacityTimeout": PULUMI_ONLY,
    },
    "aws:ebs/volume:Volume": {
        "availabilityZone": Api("ec2", "CreateVolumeRequest.AvailabilityZone", ref=True),
        "encrypted": Api("ec2", "CreateVolumeRequest.Encrypted"),
        "kmsKeyId": Api("ec2", "CreateVolumeRequest.KmsKeyId"),
        "size": Api("ec2", "CreateVolumeRequest.Size"),
        "type": Api("ec2", "CreateVolumeRequest.VolumeType"),
        "finalSnapshot": Free("a provider setting: it calls CreateSnapshot before DeleteVolume"),
        "tags.*": TAGS,
    },
    "aws:ec2/volumeAttachment:VolumeAttachment": {
        "deviceName": Api("ec2", "AttachVolumeRequest.Device"),
        "instanceId": Api("ec2", "AttachVolumeRequest.InstanceId", ref=True),
        "volumeId": Api("ec2", "AttachVolumeRequest.VolumeId", ref=True),
    },
    "aws:secretsmanager/secret:Secret": {
        "description": Api("secretsmanager", "CreateSecretRequest.Description"),
        "name": Api("secretsmanager", "CreateSecretRequest.Name"),
        "recoveryWindowInDays": Free(
            "sent at deletion: 0 becomes DeleteSecretRequest.ForceDeleteWithoutRecovery, "
            "7-30 RecoveryWindowInDays"
        ),
        "tags.*": Api("secretsmanager", "Tag.Value", key="Tag.Key"),
    },
    "aws:secretsmanager/secretPolicy:SecretPolicy": {
        "blockPublicPolicy": Api("secretsmanager", "PutResourcePolicyRequest.BlockPublicPolicy"),
        "policy": Api("secretsmanager", "PutResourcePolicyRequest.ResourcePolicy"),
        "secretArn": Api("secretsmanager", "PutResourcePolicyRequest.SecretId"),
    },
    "aws:iam/role:Role": {
        "assumeRolePolicy": Api("iam", "CreateRoleRequest.AssumeRolePolicyDocument"),
        "description": Api("iam", "CreateRoleRequest.Description"),
        "tags.*": Api("iam", "Tag.Value", key="Tag.Key"),
    },
    "aws:iam/rolePolicy:RolePolicy": {
        "policy": Api("iam", "PutRolePolicyRequest.PolicyDocument"),
        "role": Api("iam", "PutRolePolicyRequest.RoleName", ref=True),
    },
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {
        "policyArn": Api("iam", "AttachRolePolicyRequest.PolicyArn"),
        "role": Api("iam", "AttachRolePolicyRequest.RoleName", ref=True),
    },
    "aws:rds/subnetGroup:SubnetGroup": {
        "description": Api("rds", "CreateDBSubnetGroupMessage.DBSubnetGroupDescription"),
        "subnetIds[]": Api("rds", "CreateDBSubnetGroupMessage.SubnetIds[]", ref=True),
        "tags.*": _RDS_TAGS,
    },
    "aws:rds/parameterGroup:ParameterGroup": {
        "description": Api("rds", "CreateDBParameterGroupMessage.Description"),
        "family": Api("rds", "CreateDBParameterGroupMessage.DBParameterGroupFamily"),
        "parameters[].name": Api(
            "rds", "ModifyDBParameterGroupMessage.Parameters[].ParameterName", note="set after the create"
        ),
        "parameters[].value": Api("rds", "ModifyDBParameterGroupMessage.Parameters[].ParameterValue"),
        "parameters[].applyMethod": Api("rds", "ModifyDBParameterGroupMessage.Parameters[].ApplyMethod"),
        "tags.*": _RDS_TAGS,
    },
    "aws:rds/instance:Instance": {
        "allocatedStorage": Api("rds", f"{_RDS}.AllocatedStorage"),
        "autoMinorVersionUpgrade": Api("rds", f"{_RDS}.AutoMinorVersionUpgrade"),
        "availabilityZone": Api("rds", f"{_RDS}.AvailabilityZone"),
        "backupRetentionPeriod": Api("rds", f"{_RDS}.BackupRetentionPeriod"),
        "caCertIdentifier": Api("rds", f"{_RDS}.CACertificateIdentifier"),
        "copyTagsToSnapshot": Api("rds", f"{_RDS}.CopyTagsToSnapshot"),
        "dbSubnetGroupName": Api("rds", f"{_RDS}.DBSubnetGroupName", ref=True),
        "deletionProtection": Api("rds", f"{_RDS}.DeletionProtection"),
        "engine": Api("rds", f"{_RDS}.Engine"),
        "engineVersion": Api("rds", f"{_RDS}.EngineVersion"),
        "finalSnapshotIdentifier": Api("rds", "DeleteDBInstanceMessage.FinalDBSnapshotIdentifier"),
        "identifier": Api("rds", f"{_RDS}.DBInstanceIdentifier"),
        "instanceClass": Api("rds", f"{_RDS}.DBInstanceClass"),
        "kmsKeyId": Api("rds", f"{_RDS}.KmsKeyId", ref=True),
        "manageMasterUserPassword": Api("rds", f"{_RDS}.ManageMasterUserPassword"),
        "masterUserSecretKmsKeyId": Api("rds", f"{_RDS}.MasterUserSecretKmsKeyId", ref=True),
        "maxAllocatedStorage": Api("rds", f"{_RDS}.MaxAllocatedStorage"),
        "multiAz": Api("rds", f"{_RDS}.MultiAZ"),
        "parameterGroupName": Api("rds", f"{_RDS}.DBParameterGroupName", ref=True),
        "publiclyAccessible": Api("rds", f"{_RDS}.PubliclyAccessible"),
        "skipFinalSnapshot": Api("rds", "DeleteDBInstanceMessage.SkipFinalSnapshot"),
        "storageEncrypted": Api("rds", f"{_RDS}.StorageEncrypted"),
        "storageType": Api("rds", f"{_RDS}.StorageType"),
        "username": Api("rds", f"{_RDS}.MasterUsername"),
        "vpcSecurityGroupIds[]": Api("rds", f"{_RDS}.VpcSecurityGroupIds[]", ref=True),
        "tags.*": _RDS_TAGS,
    },
    "aws:dlm/lifecyclePolicy:LifecyclePolicy": {
        "description": Api("dlm", "CreateLifecyclePolicyRequest.Description"),
        "executionRoleArn": Api("dlm", "CreateLifecyclePolicyRequest.ExecutionRoleArn", ref=True),
        "state": Api("dlm", "CreateLifecyclePolicyRequest.State"),
        "policyDetails.policyType": Api("dlm", f"{_DLM}.PolicyType"),
        "policyDetails.resourceTypes[]": Api("dlm", f"{_DLM}.ResourceTypes[]"),
        "policyDetails.targetTags.*": Api(
            "dlm", f"{_DLM}.TargetTags[].Value", key=f"{_DLM}.TargetTags[].Key", note="a map in the provider"
        ),
        "policyDetails.schedules[].name": Api("dlm", f"{_DLM}.Schedules[].Name"),
        "policyDetails.schedules[].copyTags": Api("dlm", f"{_DLM}.Schedules[].CopyTags"),
        "policyDetails.schedules[].createRule.interval": Api(
            "dlm", f"{_DLM}.Schedules[].CreateRule.Interval"
        ),
        "policyDetails.schedules[].createRule.intervalUnit": Api(
            "dlm", f"{_DLM}.Schedules[].CreateRule.IntervalUnit"
        ),
        "policyDetails.schedules[].createRule.times": Api(
            "dlm", f"{_DLM}.Schedules[].CreateRule.Times[]", note="the provider takes the API's one-item list"
        ),
        "policyDetails.schedules[].retainRule.count": Api("dlm", f"{_DLM}.Schedules[].RetainRule.Count"),
        "tags.*": Api(
            "dlm", "CreateLifecyclePolicyRequest.Tags{}", key="CreateLifecyclePolicyRequest.Tags{key}"
        ),
    },
    "aws:iam/instanceProfile:InstanceProfile": {
        "role": Api("iam", "AddRoleToInstanceProfileRequest.RoleName", ref=True),
        "tags.*": Api("iam", "Tag.Value", key="Tag.Key"),
    },
    "aws:ec2/vpc:Vpc": {
        "cidrBlock": Api("ec2", "CreateVpcRequest.CidrBlock"),
        "enableDnsHostnames": Api("ec2", "ModifyVpcAttributeRequest.EnableDnsHostnames.Value"),
        "enableDnsSupport": Api("ec2", "ModifyVpcAttributeRequest.EnableDnsSupport.Value"),
        "tags.*": TAGS,
    },
    "aws:ec2/flowLog:FlowLog": {
        "iamRoleArn": Api("ec2", "CreateFlowLogsRequest.DeliverLogsPermissionArn", ref=True),
        "logDestination": Api("ec2", "CreateFlowLogsRequest.LogDestination", ref=True),
        "logDestinationType": Api("ec2", "CreateFlowLogsRequest.LogDestinationType"),
        "maxAggregationInterval": Api("ec2", "CreateFlowLogsRequest.MaxAggregationInterval"),
        "trafficType": Api("ec2", "CreateFlowLogsRequest.TrafficType"),
        "vpcId": Api(
            "ec2",
            "CreateFlowLogsRequest.ResourceIds[]",
            ref=True,
            note="the provider sends vpc_id as the one ResourceIds entry, with ResourceType VPC",
        ),
        "tags.*": Api(
            "ec2",
            "CreateFlowLogsRequest.TagSpecifications[].Tags[].Value",
            key="CreateFlowLogsRequest.TagSpecifications[].Tags[].Key",
            note="the provider tags the flow log through a vpc-flow-log TagSpecification",
        ),
    },
    "aws:cloudwatch/logGroup:LogGroup": {
        "namePrefix": Api(
            "logs",
            "CreateLogGroupRequest.logGroupName",
            note="the provider appends a unique suffix to the prefix to form the log group's name",
        ),
        "retentionInDays": Api(
            "logs",
            "PutRetentionPolicyRequest.retentionInDays",
            note="the provider sets it with PutRetentionPolicy after CreateLogGroup",
        ),
        "tags.*": Api("logs", "CreateLogGroupRequest.tags{}", key="CreateLogGroupRequest.tags{key}"),
    },
    "aws:ec2/subnet:Subnet": {
        "availabilityZone": Api("ec2", "CreateSubnetRequest.AvailabilityZone"),
        "availabilityZoneId": Api("ec2", "CreateSubnetRequest.AvailabilityZoneId"),
        "cidrBlock": Api("ec2", "CreateSubnetRequest.CidrBlock"),
        "mapPublicIpOnLaunch": Api("ec2", "ModifySubnetAttributeRequest.MapPublicIpOnLaunch.Value"),
        "vpcId": Api("ec2", "CreateSubnetRequest.VpcId", ref=True),
        "tags.*": TAGS,
    },
    "aws:ec2/internetGateway:InternetGateway": {
        "vpcId": Api("ec2", "AttachInternetGatewayRequest.VpcId", ref=True),
        "tags.*": TAGS,
    },
    "aws:ec2/eip:Eip": {"domain": Api("ec2", "AllocateAddressRequest.Domain"), "tags.*": TAGS},
    "aws:ec2/natGateway:NatGateway": {
        "allocationId": Api("ec2", "CreateNatGatewayRequest.AllocationId", ref=True),
        "subnetId": Api("ec2", "CreateNatGatewayRequest.SubnetId", ref=True),
        "tags.*": TAGS,
    },
    "aws:ec2/routeTable:RouteTable": {
        "routes[].cidrBlock": Api("ec2", "CreateRouteRequest.DestinationCidrBlock"),
        "routes[].gatewayId": Api("ec2", "CreateRouteRequest.GatewayId", ref=True),
        "routes[].natGatewayId": Api("ec2", "CreateRouteRequest.NatGatewayId", ref=True),
        "vpcId": Api("ec2", "CreateRouteTableRequest.VpcId", ref=True),
        "tags.*": TAGS,
    },
    "aws:ec2/routeTableAssociation:RouteTableAssociation": {
        "routeTableId": Api("ec2", "AssociateRouteTableRequest.RouteTableId", ref=True),
        "subnetId": Api("ec2", "AssociateRouteTableRequest.SubnetId", ref=True),
    },
    "aws:ec2/securityGroup:SecurityGroup": {
        "description": Api("ec2", "CreateSecurityGroupRequest.Description"),
        "vpcId": Api("ec2", "CreateSecurityGroupRequest.VpcId", ref=True),
        "tags.*": TAGS,
        # Inline rules: the provider authorizes them with AuthorizeSecurityGroupEgress.
        "egress[].cidrBlocks[]": Api("ec2", "IpPermission.IpRanges[].CidrIp"),
        "egress[].fromPort": Api("ec2", "IpPermission.FromPort"),
        "egress[].protocol": Api(
            "ec2", "IpPermission.IpProtocol", note="the provider's protocol is IpProtocol"
        ),
        "egress[].toPort": Api("ec2", "IpPermission.ToPort"),
    },
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": {
        "cidrIpv4": Api("ec2", "IpPermission.IpRanges[].CidrIp"),
        "description": Api("ec2", "IpPermission.IpRanges[].Description"),
        "fromPort": Api("ec2", "IpPermission.FromPort"),
        "ipProtocol": Api("ec2", "IpPermission.IpProtocol"),
        "referencedSecurityGroupId": Api("ec2", "IpPermission.UserIdGroupPairs[].GroupId", ref=True),
        "securityGroupId": Api("ec2", "AuthorizeSecurityGroupIngressRequest.GroupId", ref=True),
        "toPort": Api("ec2", "IpPermission.ToPort"),
        "tags.*": TAGS,
    },
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": {
        "cidrIpv4": Api("ec2", "IpPermission.IpRanges[].CidrIp"),
        "description": Api("ec2", "IpPermission.IpRanges[].Description"),
        "fromPort": Api("ec2", "IpPermission.FromPort"),
        "ipProtocol": Api("ec2", "IpPermission.IpProtocol"),
        "referencedSecurityGroupId": Api("ec2", "IpPermission.UserIdGroupPairs[].GroupId", ref=True),
        "securityGroupId": Api("ec2", "AuthorizeSecurityGroupEgressRequest.GroupId", ref=True),
        "toPort": Api("ec2", "IpPermission.ToPort"),
        "tags.*": TAGS,
    },
    "aws:ec2/vpcEndpoint:VpcEndpoint": {
        "routeTableIds[]": Api("ec2", "CreateVpcEndpointRequest.RouteTableIds[]", ref=True),
        "serviceName": Api("ec2", "CreateVpcEndpointRequest.ServiceName"),
        "vpcEndpointType": Api("ec2", "CreateVpcEndpointRequest.VpcEndpointType"),
        "vpcId": Api("ec2", "CreateVpcEndpointRequest.VpcId", ref=True),
        "tags.*": TAGS,
    },
    "aws:fsx/lustreFileSystem:LustreFileSystem": {
        "dataCompressionType": Api("fsx", f"{_LUSTRE}.DataCompressionType"),
        "deploymentType": Api("fsx", f"{_LUSTRE}.DeploymentType"),
        "efaEnabled": Api("fsx", f"{_LUSTRE}.EfaEnabled"),
        "kmsKeyId": Api("fsx", "CreateFileSystemRequest.KmsKeyId"),
        "fileSystemTypeVersion": Api("fsx", "CreateFileSystemRequest.FileSystemTypeVersion"),
        "metadataConfiguration.iops": Api("fsx", f"{_LUSTRE}.MetadataConfiguration.Iops"),
        "metadataConfiguration.mode": Api("fsx", f"{_LUSTRE}.MetadataConfiguration.Mode"),
        "perUnitStorageThroughput": Api("fsx", f"{_LUSTRE}.PerUnitStorageThroughput"),
        "automaticBackupRetentionDays": Api("fsx", f"{_LUSTRE}.AutomaticBackupRetentionDays"),
        "dailyAutomaticBackupStartTime": Api("fsx", f"{_LUSTRE}.DailyAutomaticBackupStartTime"),
        "copyTagsToBackups": Api("fsx", f"{_LUSTRE}.CopyTagsToBackups"),
        "skipFinalBackup": Api(
            "fsx",
            "DeleteFileSystemLustreConfiguration.SkipFinalBackup",
            note="sent when the file system is deleted, not when it is created",
        ),
        "securityGroupIds[]": Api("fsx", "CreateFileSystemRequest.SecurityGroupIds[]", ref=True),
        "storageCapacity": Api("fsx", "CreateFileSystemRequest.StorageCapacity"),
        "storageType": Api("fsx", "CreateFileSystemRequest.StorageType"),
        "subnetIds": Api(
            "fsx",
            "CreateFileSystemRequest.SubnetIds[]",
            ref=True,
            note="pulumi-aws 7 takes one subnet id as a string; the API takes a list",
        ),
        "tags.*": Api("fsx", "Tag.Value", key="Tag.Key"),
    },
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": {
        "batchImportMetaDataOnCreate": Api(
            "fsx", "CreateDataRepositoryAssociationRequest.BatchImportMetaDataOnCreate"
        ),
        "dataRepositoryPath": Api("fsx", "CreateDataRepositoryAssociationRequest.DataRepositoryPath"),
        "fileSystemId": Api("fsx", "CreateDataRepositoryAssociationRequest.FileSystemId", ref=True),
        "fileSystemPath": Api("fsx", "CreateDataRepositoryAssociationRequest.FileSystemPath"),
        "importedFileChunkSize": Api("fsx", "CreateDataRepositoryAssociationRequest.ImportedFileChunkSize"),
        "s3.autoExportPolicy.events[]": Api(
            "fsx", "CreateDataRepositoryAssociationRequest.S3.AutoExportPolicy.Events[]"
        ),
        "s3.autoImportPolicy.events[]": Api(
            "fsx", "CreateDataRepositoryAssociationRequest.S3.AutoImportPolicy.Events[]"
        ),
        "tags.*": Api("fsx", "Tag.Value", key="Tag.Key"),
    },
    "aws:s3/bucket:Bucket": {
        "bucketPrefix": Api(
            "s3",
            "CreateBucketRequest.Bucket",
            note="the provider appends a unique suffix to the prefix to form the bucket name",
        ),
        "forceDestroy": PULUMI_ONLY,
        "tags.*": Api("s3", "Tag.Value", key="Tag.Key"),
    },
    "aws:s3/bucketObjectv2:BucketObjectv2": {
        "bucket": Api("s3", "PutObjectRequest.Bucket", ref=True),
        "content": Api("s3", "PutObjectRequest.Body", note="a following host's boot script"),
        "contentType": Api("s3", "PutObjectRequest.ContentType"),
        "kmsKeyId": Api("s3", "PutObjectRequest.SSEKMSKeyId"),
        "key": Api("s3", "PutObjectRequest.Key"),
        "serverSideEncryption": Api("s3", "PutObjectRequest.ServerSideEncryption"),
        "source": Free("a local asset the provider uploads as the request body"),
        "tags.*": Api("s3", "Tag.Value", key="Tag.Key"),
    },
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": {
        "bucket": Api("s3", "PutBucketOwnershipControlsRequest.Bucket", ref=True),
        "rule.objectOwnership": Api("s3", "OwnershipControlsRule.ObjectOwnership"),
    },
    "aws:s3/bucketPolicy:BucketPolicy": {
        "bucket": Api("s3", "PutBucketPolicyRequest.Bucket", ref=True),
        "policy": Api("s3", "PutBucketPolicyRequest.Policy"),
    },
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {
        "blockPublicAcls": Api("s3", "PublicAccessBlockConfiguration.BlockPublicAcls"),
        "blockPublicPolicy": Api("s3", "PublicAccessBlockConfiguration.BlockPublicPolicy"),
        "bucket": Api("s3", "PutPublicAccessBlockRequest.Bucket", ref=True),
        "ignorePublicAcls": Api("s3", "PublicAccessBlockConfiguration.IgnorePublicAcls"),
        "restrictPublicBuckets": Api("s3", "PublicAccessBlockConfiguration.RestrictPublicBuckets"),
    },
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {
        "bucket": Api("s3", "PutBucketEncryptionRequest.Bucket", ref=True),
        "rules[].applyServerSideEncryptionByDefault.sseAlgorithm": Api(
            "s3", "ServerSideEncryptionRule.ApplyServerSideEncryptionByDefault.SSEAlgorithm"
        ),
        "rules[].applyServerSideEncryptionByDefault.kmsMasterKeyId": Api(
            "s3", "ServerSideEncryptionRule.ApplyServerSideEncryptionByDefault.KMSMasterKeyID"
        ),
        "rules[].bucketKeyEnabled": Api("s3", "ServerSideEncryptionRule.BucketKeyEnabled"),
    },
    "aws:s3/bucketVersioning:BucketVersioning": {
        "bucket": Api("s3", "PutBucketVersioningRequest.Bucket", ref=True),
        "versioningConfiguration.status": Api("s3", "VersioningConfiguration.Status"),
    },
    "aws:budgets/budget:Budget": {
        "budgetType": Api("budgets", "Budget.BudgetType"),
        "costFilters[].name": Api(
            "budgets",
            "Budget.CostFilters{key}",
            note="the provider's list of name/values filters is the API's CostFilters map",
        ),
        "costFilters[].values[]": Api("budgets", "Budget.CostFilters{}[]"),
        "filterExpression.ands[].tags.key": Api("budgets", f"{_BUDGET_AND}.Tags.Key"),
        "filterExpression.ands[].tags.matchOptions[]": Api("budgets", f"{_BUDGET_AND}.Tags.MatchOptions[]"),
        "filterExpression.ands[].tags.values[]": Api("budgets", f"{_BUDGET_AND}.Tags.Values[]"),
        "limitAmount": Api("budgets", "Budget.BudgetLimit.Amount"),
        "limitUnit": Api("budgets", "Budget.BudgetLimit.Unit"),
        "metrics": Api(
            "budgets",
            "Budget.Metrics[]",
            note="the provider's one metric is the API's Metrics list of at most one",
        ),
        "name": Api("budgets", "Budget.BudgetName"),
        "notifications[].comparisonOperator": Api("budgets", "Notification.ComparisonOperator"),
        "notifications[].notificationType": Api("budgets", "Notification.NotificationType"),
        "notifications[].subscriberEmailAddresses[]": Api(
            "budgets", "Subscriber.Address", note="each address is a Subscriber with SubscriptionType EMAIL"
        ),
        "notifications[].threshold": Api("budgets", "Notification.Threshold"),
        "notifications[].thresholdType": Api("budgets", "Notification.ThresholdType"),
        "timeUnit": Api("budgets", "Budget.TimeUnit"),
    },
    # terraform-provider-aws r/ce_cost_allocation_tag: UpdateCostAllocationTagsStatus with one entry.
    "aws:costexplorer/costAllocationTag:CostAllocationTag": {
        "status": Api("ce", "CostAllocationTagStatusEntry.Status"),
        "tagKey": Api("ce", "CostAllocationTagStatusEntry.TagKey"),
    },
}
